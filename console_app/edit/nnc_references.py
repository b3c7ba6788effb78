"""NNC's paper reference for each layer type that has one (the ``Reference=`` line of its definition),
shown in the EDIT tab's layer help with its links.

Copied from Sony's Neural Network Console desktop settings (``layer_component/*/*.txt``), distributed
under the Apache License 2.0, the license nnconsole itself is under (``LICENSE``; the definitions and
that license are also in ``tests/data/nnc_reference``). ``tests/gui/edit/test_edit_overview_help.py`` checks this
table against those definitions. Keyed by NNC's layer type name.
"""
from __future__ import annotations

from typing import Dict

REFERENCES: Dict[str, str] = {
    'AdaptiveSeparableConvolution': 'Simon Niklaus, Long Mai, Feng Liu, Video Frame Interpolation via Adaptive Separable Convolution, https://arxiv.org/abs/1708.01692, Mart Kartašev, Carlo Rapisarda, Dominik Fay, Implementing Adaptive Separable Convolution for Video Frame Interpolation, https://arxiv.org/abs/1809.07759',
    'BatchNormalization': 'Ioffe and Szegedy, Batch Normalization: Accelerating Deep Network Training by Reducing Internal Covariate Shift. https://arxiv.org/abs/1502.03167',
    'BinaryConnectAffine': 'M. Courbariaux, Y. Bengio, and J.-P. David. BinaryConnect: Training Deep Neural Networks with binary weights during propagations. https://arxiv.org/abs/1511.00363',
    'BinaryConnectConvolution': 'M. Courbariaux, Y. Bengio, and J.-P. David. BinaryConnect: Training Deep Neural Networks with binary weights during propagations. https://arxiv.org/abs/1511.00363',
    'BinarySigmoid': 'Courbariaux, Matthieu, and Yoshua Bengio. Binarynet: Training deep neural networks with weights and activations constrained to+ 1 or-1. https://arxiv.org/abs/1602.02830',
    'BinaryTanh': 'Courbariaux, Matthieu, and Yoshua Bengio. Binarynet: Training deep neural networks with weights and activations constrained to+ 1 or-1. https://arxiv.org/abs/1602.02830',
    'BinaryWeightAffine': 'Rastegari, Mohammad, et al. XNOR-Net: ImageNet Classification Using Binary Convolutional Neural Networks. https://arxiv.org/abs/1603.05279',
    'BinaryWeightConvolution': 'Rastegari, Mohammad, et al. XNOR-Net: ImageNet Classification Using Binary Convolutional Neural Networks. https://arxiv.org/abs/1603.05279',
    'CReLU': 'Wenling Shang, Kihyuk Sohn, Diogo Almeida, Honglak Lee. Understanding and Improving Convolutional Neural Networks via Concatenated Rectified Linear Units. https://arxiv.org/abs/1603.05201',
    'Convolution': 'Chen et al., DeepLab: Semantic Image Segmentation with Deep Convolutional Nets, Atrous Convolution, and Fully Connected CRFs. https://arxiv.org/abs/1606.00915\nYu et al., Multi-Scale Context Aggregation by Dilated Convolutions. https://arxiv.org/abs/1511.07122',
    'DeformableConvolution': 'Jifeng Dai, Haozhi Qi, Yuwen Xiong, Yi Li, Guodong Zhang, Han Hu, Yichen Wei, Deformable Convolutional Networks, https://arxiv.org/abs/1703.06211, Xizhou Zhu, Han Hu, Stephen Lin, Jifeng Dai, Deformable ConvNets v2: More Deformable, Better Results, https://arxiv.org/abs/1811.11168',
    'DepthwiseConvolution': 'F. Chollet: Chollet, Francois. "Xception: Deep Learning with Depthwise Separable Convolutions. https://arxiv.org/abs/1610.02357',
    'ELU': 'Clevart et al., Fast and Accurate Deep Network Learning by Exponential Linear Units (ELUs). http://arxiv.org/abs/1511.07289',
    'FusedBatchNormalization': 'Ioffe and Szegedy, Batch Normalization: Accelerating Deep Network Training by Reducing Internal Covariate Shift. https://arxiv.org/abs/1502.03167',
    'GELU': 'Dan Hendrycks, Kevin Gimpel, Gaussian Error Linear Units (GELUs). https://arxiv.org/abs/1606.08415',
    'GroupNormalization': 'Yuxin Wu, Kaiming He, Group Normalization. https://arxiv.org/abs/1803.08494',
    'InstanceNormalization': 'Dmitry Ulyanov, Andrea Vedaldi, Victor Lempitsky, Instance Normalization: The Missing Ingredient for Fast Stylization https://arxiv.org/abs/1607.08022',
    'LayerNormalization': 'Jimmy Lei Ba, Jamie Ryan Kiros, Geoffrey E. Hinton, Layer Normalization. https://arxiv.org/abs/1607.06450',
    'LeakyReLU': 'Andrew L. Maas, Awni Y. Hannun, Andrew Y. Ng. Rectifier Nonlinearities Improve Neural Network Acoustic Models. https://ai.stanford.edu/~amaas/papers/relu_hybrid_icml2013_final.pdf',
    'MinMaxQuantize': 'Benoit Jacob, Skirmantas Kligys, Bo Chen, Menglong Zhu, Matthew Tang, Andrew Howard, Hartwig Adam, Dmitry Kalenichenko, Quantization and Training of Neural Networks for Efficient Integer-Arithmetic-Only Inference, https://arxiv.org/abs/1712.05877',
    'Mish': 'Diganta Misra, Mish: A Self Regularized Non-Monotonic Activation Function https://arxiv.org/abs/1908.08681',
    'NmsDetection2d': 'Joseph Redmon, Ali Farhadi, YOLO9000: Better, Faster, Stronger. https://arxiv.org/abs/1612.08242',
    'PReLU': 'Kaiming He, Xiangyu Zhang, Shaoqing Ren, Jian Sun. Delving Deep into Rectifiers: Surpassing Human-Level Performance on ImageNet Classification. https://arxiv.org/abs/1502.01852',
    'Pow2Quantize': 'Miyashita Daisuke, Lee H. Edward, Murmann Boris. Convolutional Neural Networks using Logarithmic Data Representation. https://arxiv.org/abs/1603.01025\nAojun Zhou, Anbang Yao, Yiwen Guo, Lin Xu, Yurong Chen. Incremental Network Quantization: Towards Lossless CNNs with Low-precision Weights. https://arxiv.org/abs/1702.03044',
    'ReLU': 'Vinod Nair, Geoffrey E. Hinton. Rectified Linear Units Improve Restricted Boltzmann Machines. http://citeseerx.ist.psu.edu/viewdoc/download?doi=10.1.1.165.6419&rep=rep1&type=pdf',
    'SELU': 'Element-wise Scaled Exponential Linear Unit (SELU) function by Klambauer et al. (2017).',
    'SpectralNorm': 'Takeru Miyato, Toshiki Kataoka, Masanori Koyama, Yuichi Yoshida, "Spectral Normalization for Generative Adversarial Networks", International Conference on Learning Representations. 2018.',
    'Swish': 'Prajit Ramachandran, Barret Zoph, and Quoc V. Le, SEARCHING FOR ACTIVATION FUNCTIONS. https://arxiv.org/abs/1710.05941',
    'VATNoise': 'Miyato et.al, Distributional Smoothing with Virtual Adversarial Training. https://arxiv.org/abs/1507.00677',
    'WeightNormalization': 'Tim Salimans, Diederik P. Kingma, Weight Normalization: A Simple Reparameterization to Accelerate Training of Deep Neural Networks, https://arxiv.org/abs/1602.07868',
    'WeightStandardization': 'Siyuan Qiao, Huiyu Wang, Chenxi Liu, Wei Shen, Alan Yuille, Weight Standardization https://arxiv.org/pdf/1903.10520v1.pdf',
}
